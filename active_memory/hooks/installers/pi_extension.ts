// active-memory: written by `active-memory hook install pi`; `active-memory hook uninstall
// pi` removes it. Edits are overwritten by the next install.
//
// After each tool call (Pi's `tool_result` event, which may change the result the model
// sees), asks `active-memory-hook pi` which lessons from earlier runs match the call and
// appends their framed text to the tool's result. Any failure (command missing, slow,
// non-zero exit, unreadable answer) leaves the result unchanged: recall must never break
// a tool call. After a compaction (`session_compact`, manual or automatic) runs
// `active-memory-hook context pi`: the compacted context no longer holds the cards it
// was given, so they may come again. When the session ends (`session_shutdown`), runs
// `active-memory-hook session-end pi`, which queues the session for its postmortem.
// Plain JavaScript, so that Pi loads it without type checks.

import { spawn } from "node:child_process";
import { homedir } from "node:os";
import { join } from "node:path";

const COMMAND = process.env.ACTIVE_MEMORY_HOOK_COMMAND || "active-memory-hook";
// A project install names the command from the home folder ("~/…"): nothing of one
// user in a file a team commits.
const EXECUTABLE = COMMAND.startsWith("~/") ? join(homedir(), COMMAND.slice(2)) : COMMAND;
const TIMEOUT_MS = 5000;

function askActiveMemory(payload, cwd, args = ["pi"]) {
  return new Promise((resolve) => {
    let child;
    try {
      child = spawn(EXECUTABLE, args, { cwd, stdio: ["pipe", "pipe", "ignore"] });
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

function sessionIdOf(ctx) {
  try {
    return ctx.sessionManager.getSessionId();
  } catch {
    return undefined;
  }
}

function sessionFileOf(ctx) {
  try {
    return ctx.sessionManager.getSessionFile();
  } catch {
    return undefined;
  }
}

export default function activeMemory(pi) {
  pi.on("tool_result", async (event, ctx) => {
    try {
      const cwd = ctx.cwd || process.cwd();
      const payload = {
        harness: "pi",
        tool: event.toolName,
        args: event.input || {},
        sessionID: sessionIdOf(ctx),
        cwd,
      };
      const appendix = appendixOf(await askActiveMemory(payload, cwd));
      if (!appendix) return undefined;
      const content = Array.isArray(event.content) ? event.content : [];
      return { content: [...content, { type: "text", text: appendix }] };
    } catch {
      return undefined; // never fail the tool call
    }
  });
  pi.on("session_compact", async (_event, ctx) => {
    try {
      const cwd = ctx.cwd || process.cwd();
      const payload = { event: "session_compact", sessionID: sessionIdOf(ctx), cwd };
      await askActiveMemory(payload, cwd, ["context", "pi"]);
    } catch {
      // never fail the session
    }
  });
  pi.on("session_shutdown", async (event, ctx) => {
    try {
      const transcriptPath = sessionFileOf(ctx);
      if (!transcriptPath) return; // an ephemeral session (--no-session): nothing to learn from
      const cwd = ctx.cwd || process.cwd();
      const reason = (event && event.reason) || "quit";
      const payload = {
        sessionID: sessionIdOf(ctx),
        cwd,
        transcriptPath,
        event: `session_shutdown:${reason}`,
      };
      await askActiveMemory(payload, cwd, ["session-end", "pi"]);
    } catch {
      // never fail the session
    }
  });
}
