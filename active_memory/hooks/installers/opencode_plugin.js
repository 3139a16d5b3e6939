// active-memory: written by `active-memory hook install opencode`; `active-memory hook
// uninstall opencode` removes it. Edits are overwritten by the next install.
//
// After each tool call, asks `active-memory-hook after-tool` which lessons from earlier
// runs match the call, and appends their framed text to the tool's output. When a
// session goes idle (its turn is over) it is queued for its postmortem
// (`active-memory-hook session-end opencode`, a turn event the worker lets settle), and
// when OpenCode exits every session this process ran is queued as ended. A compaction
// tells recall that the context no longer holds earlier cards. Any failure (command
// missing, slow, non-zero exit, unreadable answer) leaves OpenCode's work unchanged:
// recall must never break a tool call or a session.

import { spawn, spawnSync } from "node:child_process";
import { homedir } from "node:os";
import { join } from "node:path";

const COMMAND = process.env.ACTIVE_MEMORY_HOOK_COMMAND || "active-memory-hook";
// A project install names the command from the home folder ("~/…"): nothing of one
// user in a file a team commits.
const EXECUTABLE = COMMAND.startsWith("~/") ? join(homedir(), COMMAND.slice(2)) : COMMAND;
const TIMEOUT_MS = 5000;
const MAX_PENDING = 1000;

function askActiveMemory(payload, cwd, args = ["after-tool"], running = undefined) {
  return new Promise((resolve) => {
    let child;
    try {
      child = spawn(EXECUTABLE, args, { cwd, stdio: ["pipe", "pipe", "ignore"] });
    } catch {
      resolve("");
      return;
    }
    if (running) running.add(child);
    let out = "";
    const done = (value) => {
      clearTimeout(timer);
      if (running) running.delete(child);
      resolve(value);
    };
    const timer = setTimeout(() => {
      child.kill();
      done("");
    }, TIMEOUT_MS);
    child.on("error", () => done(""));
    child.stdout.setEncoding("utf8");
    child.stdout.on("data", (chunk) => {
      out += chunk;
    });
    child.on("close", (code) => done(code === 0 ? out : ""));
    child.stdin.on("error", () => {});
    child.stdin.end(JSON.stringify(payload));
  });
}

// The hook prints `{"append": "\n\n<framed cards>"}` (the exact text to add), or nothing.
function appendixOf(stdout) {
  const text = stdout.trim();
  if (!text) return "";
  try {
    const answer = JSON.parse(text);
    return answer && typeof answer.append === "string" ? answer.append : "";
  } catch {
    return "";
  }
}

export const ActiveMemory = async ({ directory, worktree }) => {
  const cwd = directory || worktree || process.cwd();
  // tool.execute.after may not carry the arguments; remember them from before.
  const pending = new Map();
  // Sessions this process ran (sub-agent sessions are part of their parent's import).
  const sessions = new Set();
  const subagents = new Set();
  // Turn-end enqueues still running: a final end written at exit must come last.
  const running = new Set();
  process.on("exit", () => {
    for (const child of running) {
      try {
        child.kill();
      } catch {}
    }
    for (const sessionID of sessions) {
      try {
        spawnSync(EXECUTABLE, ["session-end", "opencode"], {
          cwd,
          input: JSON.stringify({ sessionID, cwd, event: "session.end" }),
          stdio: ["pipe", "ignore", "ignore"],
          timeout: TIMEOUT_MS,
        });
      } catch {
        // never fail OpenCode's exit
      }
    }
  });
  return {
    event: async ({ event }) => {
      try {
        const properties = (event && event.properties) || {};
        if (event.type === "session.created") {
          const info = properties.info || {};
          if (info.parentID && info.id) subagents.add(info.id);
        } else if (event.type === "session.idle") {
          const sessionID = properties.sessionID;
          if (!sessionID || subagents.has(sessionID)) return;
          sessions.add(sessionID);
          await askActiveMemory(
            { sessionID, cwd, event: "session.idle" },
            cwd,
            ["session-end", "opencode"],
            running,
          );
        } else if (event.type === "session.compacted") {
          const sessionID = properties.sessionID;
          if (!sessionID) return;
          await askActiveMemory(
            { sessionID, cwd, event: "session.compacted" },
            cwd,
            ["context", "opencode"],
          );
        }
      } catch {
        // never fail the session
      }
    },
    "tool.execute.before": async (input, output) => {
      if (pending.size >= MAX_PENDING) pending.delete(pending.keys().next().value);
      pending.set(input.callID, (output && output.args) || {});
    },
    "tool.execute.after": async (input, output) => {
      const args = input.args || pending.get(input.callID) || {};
      pending.delete(input.callID);
      if (!output || typeof output.output !== "string") return;
      try {
        const stdout = await askActiveMemory(
          { harness: "opencode", tool: input.tool, args, sessionID: input.sessionID, cwd },
          cwd,
        );
        const appendix = appendixOf(stdout);
        if (appendix) output.output += appendix;
      } catch {
        // never fail the tool call
      }
    },
  };
};
