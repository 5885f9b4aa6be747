#!/usr/bin/env python3
"""../shared/tools/claude_chain.py's reading of Claude Code transcripts, plus the parallel tool calls its
parent walk passes by: one API response with several tool_use blocks is written as a line per block (same
message.id), and each tool_result line's parent is its own call's line, so a walk from the last line back
follows one call and its result. This adds, to the reader's chain, every other line of a response already
on it and every tool_result line whose parent is one of that response's lines; everything else (which
lines count, how characters are counted) is the reader's own. Prints the reader's JSON, with the image and
document blocks of the messages it counts (`images`, those in tool results included)."""
import json, os, sys

sys.path.insert(0, os.path.join(os.environ['COMPACTBENCH_SHARED'], 'tools'))
import claude_chain as reader  # noqa: E402


def with_parallel(lines, chain):
    lines = [d for d in lines if isinstance(d, dict) and not d.get('isSidechain')]
    on = {id(d) for d in chain}
    ids = {(d.get('message') or {}).get('id') for d in chain if d.get('type') == 'assistant'}
    ids.discard(None)
    siblings = [d for d in lines if id(d) not in on and d.get('type') == 'assistant'
                and (d.get('message') or {}).get('id') in ids]
    calls = {d.get('uuid') for d in chain + siblings if d.get('type') == 'assistant'}

    def is_result(d):
        c = (d.get('message') or {}).get('content')
        return isinstance(c, list) and any(isinstance(x, dict) and x.get('type') == 'tool_result' for x in c)

    results = [d for d in lines if id(d) not in on and d.get('type') == 'user' and is_result(d)
               and d.get('parentUuid') in calls]
    return chain + siblings + results


def images(content):
    """Image and document blocks of a message's content, those inside tool results included."""
    if not isinstance(content, list):
        return 0
    n = 0
    for b in content:
        if not isinstance(b, dict):
            continue
        if b.get('type') in ('image', 'document'):
            n += 1
        elif b.get('type') == 'tool_result':
            n += images(b.get('content'))
    return n


def summarize(path):
    lines = reader.load(path)
    c = with_parallel(lines, reader.chain(lines))
    msgs = [d for d in c if d.get('type') in ('user', 'assistant') and not d.get('isCompactSummary') and not d.get('isMeta')]
    return {
        'messages': len(msgs),
        'chars': sum(reader.content_chars((d.get('message') or {}).get('content')) for d in msgs),
        'compactions': sum(1 for d in c if d.get('type') == 'system' and d.get('subtype') == 'compact_boundary'),
        'images': sum(images((d.get('message') or {}).get('content')) for d in msgs),
    }


if __name__ == '__main__':
    print(json.dumps({p.rsplit('/', 1)[-1].split('.')[0]: summarize(p) for p in sys.argv[1:]}, indent=1))
