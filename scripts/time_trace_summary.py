#!/usr/bin/env python3
"""Summarises a clang -ftime-trace file: where one translation unit's compile
time goes.

Usage: scripts/time_trace_summary.py TRACE.json [--top N] [--filter TEXT]

Prints, in milliseconds:
  - the phases (clang's "Total ..." events: Frontend, Backend, Source,
    InstantiateFunction, OptModule, ...);
  - the includes that took longest to parse, by their own path (inclusive:
    a header's time holds that of the headers it includes), and the same
    summed by the library they belong to (the first directory under an
    include root: asio/, nlohmann/, resil/..., c++/12/ for the standard
    library; only outermost inclusions of each library counted, so nothing
    is counted twice);
  - the function and class templates whose instantiation took longest,
    grouped by template (arguments dropped) with their count, and the single
    instantiations that took longest (inclusive of what they instantiate);
  - the functions whose optimization and code generation took longest
    (OptFunction / CodeGen Function events, by the demangled name clang
    gives, grouped by template).

--filter TEXT keeps the instantiation and function rows whose name contains
TEXT (e.g. --filter resil::). Make the trace with
  clang++ -ftime-trace -ftime-trace-granularity=100 -c FILE.cpp
(the .json lands beside the object file).
"""
import argparse
import collections
import json
import os
import re
import shutil
import subprocess
import sys


def template_name(name: str) -> str:
    """The name with every template argument list dropped: `f<int>::g<x>` -> `f<>::g<>`."""
    out, depth = [], 0
    for ch in name:
        if ch == '<':
            if depth == 0:
                out.append('<>')
            depth += 1
        elif ch == '>' and depth > 0:
            depth -= 1
        elif depth == 0:
            out.append(ch)
    return ''.join(out)


LIBRARY = re.compile(r'(?:^|/)include/(?:x86_64-linux-gnu/)?(c\+\+/\d+|resil/[^/]+/|[^/]+)')


def library_of(path: str) -> str:
    """The library a header belongs to: c++/12, asio, nlohmann, curl, resil/http/, resil (core), ..."""
    m = LIBRARY.search(os.path.normpath(path))
    if not m:
        return os.path.basename(path)
    lib = m.group(1)
    if lib.startswith('resil'):
        return lib
    if lib.endswith(('.h', '.hpp')):
        return 'resil (core)' if lib.endswith('.hpp') and 'resil' in path else '(top-level C headers)'
    return lib


def demangle(events) -> None:
    """Demangles the function names of OptFunction / CodeGen events through c++filt, when there is one."""
    chosen = [e for e in events if e['name'] in ('OptFunction', 'CodeGen Function') and e.get('args', {}).get('detail', '').startswith('_Z')]
    if not chosen or shutil.which('c++filt') is None:
        return
    names = '\n'.join(e['args']['detail'] for e in chosen) + '\n'
    out = subprocess.run(['c++filt'], input=names, capture_output=True, text=True, check=False).stdout.split('\n')
    for e, name in zip(chosen, out):
        if name:
            e['args']['detail'] = name


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('trace')
    ap.add_argument('--top', type=int, default=15)
    ap.add_argument('--filter', default='')
    args = ap.parse_args()
    with open(args.trace, encoding='utf-8') as f:
        raw = json.load(f)['traceEvents']
    events = [e for e in raw if e.get('ph') == 'X' and 'dur' in e]
    # Newer clangs (17+) write each include as a begin/end pair ("b"/"e",
    # nested in file order) instead of one complete event.
    open_sources = []
    for e in raw:
        if e.get('name') != 'Source':
            continue
        if e.get('ph') == 'b':
            open_sources.append(e)
        elif e.get('ph') == 'e' and open_sources:
            b = open_sources.pop()
            events.append({'name': 'Source', 'ph': 'X', 'ts': b['ts'], 'dur': e['ts'] - b['ts'], 'args': b.get('args', {})})
    demangle(events)
    top = args.top

    def ms(us: float) -> str:
        return f'{us / 1000:9.0f}'

    print('## phases (ms)')
    for e in sorted((e for e in events if e['name'].startswith('Total ')), key=lambda e: -e['dur'])[:top]:
        print(f"{ms(e['dur'])}  {e['name'][6:]}")

    # Includes: a "Source" event per header; nesting by time interval.
    sources = sorted((e for e in events if e['name'] == 'Source'), key=lambda e: (e['ts'], -e['dur']))
    print('\n## includes, longest to parse (ms, inclusive)')
    for e in sorted(sources, key=lambda e: -e['dur'])[:top]:
        print(f"{ms(e['dur'])}  {e['args']['detail']}")
    by_lib = collections.Counter()
    stack = []  # (end, library) of the enclosing Source events
    for e in sources:
        while stack and stack[-1][0] <= e['ts']:
            stack.pop()
        lib = library_of(e['args']['detail'])
        if lib not in (s[1] for s in stack):
            by_lib[lib] += e['dur']
        stack.append((e['ts'] + e['dur'], lib))
    # Exclusive: a header's own time, without that of the headers it includes.
    own = collections.Counter()
    stack = []  # [end, library, time of children] of the enclosing Source events
    for e in sources:
        while stack and stack[-1][0] <= e['ts']:
            stack.pop()
        if stack:
            stack[-1][2] += e['dur']
        frame = [e['ts'] + e['dur'], library_of(e['args']['detail']), 0]
        stack.append(frame)
        e['_frame'] = frame
    for e in sources:
        own[e['_frame'][1]] += e['dur'] - e['_frame'][2]
    print('\n## includes by library (ms: inclusive of outermost inclusions, where a library included by another counts in both; '
          'and exclusive, its own headers only)')
    for lib, dur in by_lib.most_common(top):
        print(f'{ms(dur)} {ms(own[lib])}  {lib}')

    def grouped(kinds, title):
        chosen = [e for e in events if e['name'] in kinds and args.filter in e.get('args', {}).get('detail', '')]
        groups = collections.defaultdict(lambda: [0, 0])
        # Count an event only when no enclosing event of the same group is
        # open (a recursive template's nested instantiations are in its time).
        open_by_group = collections.defaultdict(list)
        for e in sorted(chosen, key=lambda e: (e['ts'], -e['dur'])):
            g = template_name(e['args']['detail'])
            ends = open_by_group[g]
            while ends and ends[-1] <= e['ts']:
                ends.pop()
            groups[g][1] += 1
            if not ends:
                groups[g][0] += e['dur']
            ends.append(e['ts'] + e['dur'])
        print(f'\n## {title}, by template (ms inclusive, count)')
        for g, (dur, n) in sorted(groups.items(), key=lambda kv: -kv[1][0])[:top]:
            print(f'{ms(dur)}  {n:5d}  {g}')
        print(f'\n## {title}, single (ms inclusive)')
        for e in sorted(chosen, key=lambda e: -e['dur'])[:top]:
            print(f"{ms(e['dur'])}  {e['args']['detail'][:200]}")

    grouped({'InstantiateFunction', 'InstantiateClass'}, 'instantiations')
    grouped({'OptFunction', 'CodeGen Function', 'RunPass'} - {'RunPass'}, 'optimized / generated functions')
    return 0


if __name__ == '__main__':
    sys.exit(main())
