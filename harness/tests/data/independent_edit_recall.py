#!/usr/bin/env python3
"""Independent count of the files a Claude Code session edited before each of its compactions that the
compaction's own summary names. Written apart from the harness's importer, probe extractor and grader, as
the reference the `recorded` strategy's artifact probes are checked against (harness/tests/it/edit_recall.rs).

Reading: the active branch of each transcript, as ../shared/tools/claude_chain.py reads it (imported from
there, not copied): the last message back to the root through every line kind with a uuid, across compact
boundaries. Only that branch counts; sidechain (subagent) lines are not on it.

Per compaction (a `system` line of subtype `compact_boundary` on the branch, in order; ordinal 1, 2, …):
- Edited files: the `file_path` (Edit, MultiEdit, Write) or `notebook_path` (NotebookEdit) of every
  assistant tool_use on the branch before the boundary, as written; a relative path is resolved against the
  line's `cwd`; normalised (`os.path.normpath`) and deduplicated. Two sets: `since_start` (from the session's
  start: what the session has changed so far, which is what a summary is asked to carry) and `since_previous`
  (from the previous boundary, or the start: what this summary alone had to bring over). Both are reported;
  `since_start` is the reference the test holds the grader to (an artifact probe scored at a compaction
  asks for a file changed at any time before it); `since_previous` shows how much of the gap is older edits.
  Whether the edit succeeded is not checked.
- Summary: the text of the first `isCompactSummary` user message after the boundary (string content, or
  the joined text parts). Attachments Claude Code adds after it (re-read files, todo lists) are not counted.
- Named: the summary's path-like tokens are its maximal runs of letters, digits and `_-./~@+` (so a path in
  backticks, parentheses or followed by `:42` is one token), without a leading `./` or trailing dots. A file
  is named when
    1. the summary contains its absolute path (anywhere, not followed by more of a name: a letter, digit,
       `_`, `-`, or `.` plus a letter or digit), or a token is
    2. its path relative to a `cwd` the branch had up to the boundary (one that contains the file), or
    3. a suffix of its path of k >= 2 whole components (`cli/root.go` names `/repo/cmd/cli/root.go`, and so
       does `cmd/cli/root.go`), or
    4. its bare file name, when no other file the session touched has that name.
  "Touched": every path argument (`file_path`, `notebook_path`) of any tool_use on the whole branch (Read,
  Edit, Write, …), resolved and normalised as above. Paths are compared case-sensitively, with `/`.
  `*_strict` repeats the count with rule 3 restricted to suffixes no other touched file ends with (the
  grader's rule); the plain count follows the rule above, which is the reference.

Output (JSON only, on stdout): per corpus, every compaction (session id = file name before the first `.`,
ordinal, edited/named counts of both sets) and the pooled shares over (file, compaction) pairs.

Usage: independent_edit_recall.py [CORPUS ...]; a corpus is a folder under ../shared/datasets-raw (default:
claude-code-long and agent-sessions/claude-code); ../shared is found beside the repository root (this file
is harness/tests/data/ in it), or at $COMPACTBENCH_SHARED.
"""
import glob
import json
import os
import re
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
SHARED = os.environ.get('COMPACTBENCH_SHARED') or os.path.join(os.path.dirname(REPO), 'shared')
sys.path.insert(0, os.path.join(SHARED, 'tools'))
import claude_chain  # noqa: E402  (../shared/tools: the independent reader of the active branch)

EDIT_TOOLS = {'Edit', 'MultiEdit', 'Write', 'NotebookEdit'}
PATH_KEYS = ('file_path', 'notebook_path')
DEFAULT_CORPORA = ['claude-code-long', 'agent-sessions/claude-code']
TOKEN = re.compile(r'[A-Za-z0-9_\-./~@+]+')
AFTER = re.compile(r'[A-Za-z0-9_\-]|\.[A-Za-z0-9]')


def resolve(path, cwd):
    if not os.path.isabs(path) and cwd:
        path = os.path.join(cwd, path)
    return os.path.normpath(path)


def tool_paths(line):
    """(tool name, resolved path) of every path argument of the line's tool_use blocks."""
    if line.get('type') != 'assistant':
        return
    for block in (line.get('message') or {}).get('content') or []:
        if not isinstance(block, dict) or block.get('type') != 'tool_use':
            continue
        args = block.get('input') or {}
        for key in PATH_KEYS:
            p = args.get(key)
            if isinstance(p, str) and p.strip():
                yield block.get('name'), resolve(p.strip(), line.get('cwd'))


def text_of(content):
    if isinstance(content, str):
        return content
    return '\n'.join(b.get('text') or '' for b in content or [] if isinstance(b, dict) and b.get('type') == 'text')


def tokens(text):
    """The path-like tokens of a text (runs of letters, digits and `_-./~@+`), without a leading `./` or
    trailing dots (sentence ends)."""
    out = set()
    for t in TOKEN.findall(text):
        t = t.rstrip('.')
        while t.startswith('./'):
            t = t[2:]
        if t:
            out.add(t)
    return out


def holds_absolute(path, text):
    """The absolute path occurs in the text, not followed by more of a name (a path with spaces is found too)."""
    start = 0
    while True:
        i = text.find(path, start)
        if i < 0:
            return False
        if not AFTER.match(text, i + len(path)):
            return True
        start = i + 1


def components(path):
    return [p for p in path.split('/') if p]


def named(path, text, toks, cwds, touched, names_count, strict):
    if holds_absolute(path, text):
        return True
    rels = {path[len(c.rstrip('/')) + 1:] for c in cwds if path.startswith(c.rstrip('/') + '/')}
    if toks & rels:
        return True
    for t in toks:
        if len(components(t)) >= 2 and path.endswith('/' + t.lstrip('/')):
            if not strict or sum(1 for f in touched if f.endswith('/' + t.lstrip('/'))) == 1:
                return True
    name = os.path.basename(path)
    return names_count.get(name, 0) == 1 and name in toks


def session(path):
    branch = claude_chain.chain(claude_chain.load(path))
    touched = {p for line in branch for _, p in tool_paths(line)}
    names_count = {}
    for p in touched:
        names_count[os.path.basename(p)] = names_count.get(os.path.basename(p), 0) + 1
    sid = os.path.basename(path).split('.')[0]
    out = []
    since_start, since_previous, cwds = set(), set(), set()
    pending = None  # a boundary waiting for its summary: (ordinal, since_start, since_previous, cwds)
    for line in branch:
        if line.get('cwd'):
            cwds.add(line['cwd'])
        if line.get('type') == 'system' and line.get('subtype') == 'compact_boundary':
            pending = (len(out) + 1, set(since_start), set(since_previous), set(cwds))
            out.append(None)
            since_previous = set()
            continue
        if pending and line.get('isCompactSummary'):
            ordinal, start_set, prev_set, seen_cwds = pending
            text = text_of((line.get('message') or {}).get('content'))
            toks = tokens(text)
            row = {'session': sid, 'ordinal': ordinal, 'summary_chars': len(text)}
            for label, files in (('since_start', start_set), ('since_previous', prev_set)):
                for variant, strict in (('', False), ('_strict', True)):
                    hits = [f for f in files if named(f, text, toks, seen_cwds, touched, names_count, strict)]
                    row[label + variant] = {'edited': len(files), 'named': len(hits)}
            out[ordinal - 1] = row
            pending = None
            continue
        for tool, p in tool_paths(line):
            if tool in EDIT_TOOLS:
                since_start.add(p)
                since_previous.add(p)
    # A boundary with no summary after it is reported with its edits and none named.
    for i, row in enumerate(out):
        if row is None:
            out[i] = {'session': sid, 'ordinal': i + 1, 'summary_chars': 0, 'missing_summary': True}
    return out


def pooled(rows, key):
    edited = sum(r[key]['edited'] for r in rows if key in r)
    hit = sum(r[key]['named'] for r in rows if key in r)
    return {'edited': edited, 'named': hit, 'share': hit / edited if edited else None}


def corpus(name):
    files = sorted(glob.glob(os.path.join(SHARED, 'datasets-raw', name, '*.jsonl*')))
    rows = [r for f in files for r in session(f)]
    return {
        'sessions': len(files),
        'compactions': len(rows),
        'since_start': pooled(rows, 'since_start'),
        'since_previous': pooled(rows, 'since_previous'),
        'since_start_strict': pooled(rows, 'since_start_strict'),
        'since_previous_strict': pooled(rows, 'since_previous_strict'),
        'per_compaction': rows,
    }


if __name__ == '__main__':
    names = sys.argv[1:] or DEFAULT_CORPORA
    print(json.dumps({n: corpus(n) for n in names}, indent=1))
