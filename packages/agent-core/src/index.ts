// The package a newcomer installs: all of @agent-core/core, with the default orchestrator already
// registered (importing @agent-core/agentic registers it), so `new Agent({ provider })` just works.
// Whoever composes their own set of orchestrators depends on @agent-core/core and the plug-ins instead.

export { type AgenticOptions, AgenticOrchestrator, agentic } from "@agent-core/agentic";
export * from "@agent-core/core";
