#!/usr/bin/env python3
"""A compactbench external compressor (protocol compactbench.exec/1, harness/docs/exec-protocol.md).

Policy: when the last request reaches `threshold` x window, keep the newest turns that fit
`keep_fraction` x window (starting at a user message), ask the harness's model to summarise the rest,
and replace the history with [summary, acknowledgement, kept turns]. Standard library only.

`--crash-on N` makes it exit with an error on its N-th request (to test failure handling).
"""
import json
import sys

crash_on = int(sys.argv[sys.argv.index("--crash-on") + 1]) if "--crash-on" in sys.argv else None
history = []


def send(message):
    message["protocol"] = "compactbench.exec/1"
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def size(content):
    return len(json.dumps(content)) // 4  # rough tokens


def is_request(content):
    return content.get("role") == "user" and not any("functionResponse" in p for p in content.get("parts", []))


for line in sys.stdin:
    msg = json.loads(line)
    if msg["type"] != "request":
        continue
    history = history[: msg["changed_from"]] + msg["contents"]
    if crash_on is not None and msg["request"] >= crash_on:
        sys.exit("summarize_head.py: crashing on request %d as asked" % msg["request"])
    knobs, window = msg["knobs"], msg["token_limit"]
    if msg["last_prompt_tokens"] < knobs["threshold"] * window and not msg["force"]:
        send({"action": "unchanged"})
        continue
    budget, kept, cut = knobs["keep_fraction"] * window, 0, len(history)
    for i in range(len(history) - 1, 0, -1):
        kept += size(history[i])
        if kept > budget:
            break
        if is_request(history[i]):
            cut = i
    if cut >= len(history) or cut == 0:
        send({"action": "unchanged"})
        continue
    head = history[:cut]
    send({"action": "call", "calls": [{"id": "summary", "system": "Summarize this conversation for the agent that continues it: the task, what was done, files touched, next steps.",
                                        "contents": head + [{"role": "user", "parts": [{"text": "Summarize the conversation so far."}]}]}]})
    answer = json.loads(sys.stdin.readline())
    summary = answer["responses"][0]["text"]
    history = [{"role": "user", "parts": [{"text": "Summary of the earlier conversation:\n" + summary}]},
               {"role": "model", "parts": [{"text": "Got it."}]}] + history[cut:]
    send({"action": "replace", "history": history, "summary": summary})
