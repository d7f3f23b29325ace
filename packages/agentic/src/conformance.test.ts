import { describeOrchestratorConformance } from "@agent-core/testing";
import { agentic } from "./agentic.js";

describeOrchestratorConformance("agentic", () => agentic());
