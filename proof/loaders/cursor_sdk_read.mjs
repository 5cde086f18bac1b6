// trajconv: read one Cursor AgentKv store back with Cursor's own local-store code.
//
// Driven by proof/loaders/cursor.py. Input: one JSON object on argv[2]:
//   {sdkDir, stateRoot, agentId, rootBlobId, cwd}
// where <stateRoot>/agents/agent-<sha256(agentId)>/store.db is already a *copy*
// of the store (the SDK rewrites meta["0"] on open). Output: one JSON object on
// stdout {ok, messages} or {ok:false, error}. No network, no API key: only the
// local store path of @cursor/sdk is used (SqliteLocalAgentStore + Agent.messages.list).
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const input = JSON.parse(process.argv[2]);
const esm = join(input.sdkDir, "dist", "esm");

function fail(err) {
  const message = err && err.stack ? String(err.stack) : String(err);
  process.stdout.write(JSON.stringify({ ok: false, error: message }) + "\n");
  process.exitCode = 1;
}

try {
  const { Agent } = await import(pathToFileURL(join(esm, "index.js")).href);
  const { SqliteLocalAgentStore } = await import(pathToFileURL(join(esm, "sqlite.js")).href);
  const store = await SqliteLocalAgentStore.open({
    workspaceRef: input.cwd,
    stateRoot: input.stateRoot,
  });
  try {
    // The SDK discovers agents from <stateRoot>/index.db, not from a bare store.db:
    // register the copied store with a checkpoint ref pointing at its root blob.
    const now = Date.now();
    await store.agents.create({
      agent: {
        agentId: input.agentId,
        cwd: input.cwd,
        status: "idle",
        createdAt: now,
        updatedAt: now,
        latestCheckpoint: { schemaVersion: 1, rootBlobId: input.rootBlobId },
      },
    });
    const messages = await Agent.messages.list(input.agentId, {
      runtime: "local",
      cwd: input.cwd,
      store,
    });
    process.stdout.write(JSON.stringify({ ok: true, messages }) + "\n");
  } finally {
    await store.dispose();
  }
} catch (err) {
  fail(err);
}
