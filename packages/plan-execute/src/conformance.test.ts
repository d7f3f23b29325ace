import { describeOrchestratorConformance } from "@agent-core/testing/conformance";
import { planExecute } from "./plan-execute.js";

describeOrchestratorConformance("plan-execute", () => planExecute());
