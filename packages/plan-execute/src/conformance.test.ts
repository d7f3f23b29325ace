import { describeOrchestratorConformance } from "@agent-core/testing";
import { planExecute } from "./plan-execute.js";

describeOrchestratorConformance("plan-execute", () => planExecute());
