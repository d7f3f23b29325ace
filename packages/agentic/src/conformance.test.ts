import { describeOrchestratorConformance } from "@agent-core/testing/conformance";
import { agentic } from "./agentic.js";

describeOrchestratorConformance("agentic", () => agentic());
