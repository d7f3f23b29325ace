import { main } from "@agent-core/cli";
const code = await main(process.argv.slice(2), { stdout: process.stdout, stderr: process.stderr, env: { ...process.env, AGENT_CORE_DEMO_DELAY_MS: "0" } });
console.log("exit", code);
