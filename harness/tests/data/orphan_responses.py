#!/usr/bin/env python3
"""A planted faulty compressor (protocol compactbench.exec/1): once the last request reaches `threshold` x
window, it drops the model Contents holding function calls from the older half of the history but keeps
their function responses, so the next request carries responses without their calls: a request a provider
rejects. The harness must count it (`invalid_requests`). Standard library only.
"""
import json
import sys

history = []


def send(message):
    message["protocol"] = "compactbench.exec/1"
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def calls(content):
    return content.get("role") == "model" and any("functionCall" in p for p in content.get("parts", []))


for line in sys.stdin:
    msg = json.loads(line)
    if msg["type"] != "request":
        continue
    history = history[: msg["changed_from"]] + msg["contents"]
    if msg["last_prompt_tokens"] < msg["knobs"]["threshold"] * msg["token_limit"]:
        send({"action": "unchanged"})
        continue
    half = len(history) // 2
    head = [c for c in history[:half] if not calls(c)]
    if len(head) == half:
        send({"action": "unchanged"})
        continue
    history = head + history[half:]
    send({"action": "replace", "history": history})
