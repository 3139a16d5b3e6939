// active-memory: written by `active-memory hook install opencode`; `active-memory hook
// uninstall opencode` removes it. Edits are overwritten by the next install.
//
// After each tool call, asks `active-memory-hook after-tool` which lessons from earlier
// runs match the call, and appends their framed text to the tool's output. Any failure
// (command missing, slow, non-zero exit, unreadable answer) leaves the output unchanged:
// recall must never break a tool call.

import { spawn } from "node:child_process";
import { homedir } from "node:os";
import { join } from "node:path";

const COMMAND = process.env.ACTIVE_MEMORY_HOOK_COMMAND || "active-memory-hook";
// A project install names the command from the home folder ("~/…"): nothing of one
// user in a file a team commits.
const EXECUTABLE = COMMAND.startsWith("~/") ? join(homedir(), COMMAND.slice(2)) : COMMAND;
const TIMEOUT_MS = 5000;
const MAX_PENDING = 1000;

function askActiveMemory(payload, cwd) {
  return new Promise((resolve) => {
    let child;
    try {
      child = spawn(EXECUTABLE, ["after-tool"], { cwd, stdio: ["pipe", "pipe", "ignore"] });
    } catch {
      resolve("");
      return;
    }
    let out = "";
    const timer = setTimeout(() => {
      child.kill();
      resolve("");
    }, TIMEOUT_MS);
    child.on("error", () => {
      clearTimeout(timer);
      resolve("");
    });
    child.stdout.setEncoding("utf8");
    child.stdout.on("data", (chunk) => {
      out += chunk;
    });
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve(code === 0 ? out : "");
    });
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
  // tool.execute.after may not carry the arguments; remember them from before.
  const pending = new Map();
  return {
    "tool.execute.before": async (input, output) => {
      if (pending.size >= MAX_PENDING) pending.delete(pending.keys().next().value);
      pending.set(input.callID, (output && output.args) || {});
    },
    "tool.execute.after": async (input, output) => {
      const args = input.args || pending.get(input.callID) || {};
      pending.delete(input.callID);
      if (!output || typeof output.output !== "string") return;
      try {
        const cwd = directory || worktree || process.cwd();
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
