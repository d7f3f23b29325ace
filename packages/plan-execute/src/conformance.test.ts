import { describeOrchestratorConformance } from "@agent-core/testing/conformance";
// The package entry, as users import it: it registers the plan_* events the protocol checks validate.
import { planExecute } from "./index.js";

describeOrchestratorConformance("plan-execute", () => planExecute());
