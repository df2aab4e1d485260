"""Validates an axl Chrome-trace file and prints what the C++ tests check,
as key=value lines: event counts by kind, per-span-name counts/threads/depths,
whether complete events nest on every track, and the track names."""
import collections
import json
import sys


def main(path):
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)  # raises (exit 1) on invalid JSON
    events = doc["traceEvents"]
    print("valid=1")
    kinds = collections.Counter()
    names = collections.defaultdict(list)
    tracks = collections.defaultdict(list)
    thread_names = {}
    for e in events:
        ph = e["ph"]
        if ph == "M":
            if e["name"] == "thread_name":
                thread_names[e["tid"]] = e["args"]["name"]
            elif e["name"] == "process_name":
                print(f"process_name={e['args']['name']}")
            continue
        kinds[e.get("cat", "?")] += 1
        if ph == "X":
            start = round(float(e["ts"]) * 1000)
            end = start + round(float(e["dur"]) * 1000)
            tracks[e["tid"]].append((start, -end, end, e["name"]))
        if e.get("cat") in ("span", "mark"):
            names[e["name"]].append(e)
    for cat in ("span", "mark", "launch", "device"):
        print(f"{cat}s={kinds[cat]}")
    nested = True
    for tid, spans in tracks.items():
        spans.sort()
        stack = []
        for start, _, end, _ in spans:
            while stack and stack[-1] <= start:
                stack.pop()
            if stack and end > stack[-1]:
                nested = False
            stack.append(end)
    print(f"nested={int(nested)}")
    span_tids = {e["tid"] for e in events if e.get("cat") == "span"}
    print(f"span_threads={len(span_tids)}")
    print(f"named_span_threads={len(span_tids & set(thread_names))}")
    for name, evs in sorted(names.items()):
        n = json.dumps(name)[1:-1]  # one line, whatever the name holds
        print(f"name.{n}.count={len(evs)}")
        print(f"name.{n}.depths={','.join(sorted({str(e['args']['depth']) for e in evs}))}")
        print(f"name.{n}.color={evs[0]['args']['color']}")
    queue_tracks = sorted(v for v in thread_names.values() if v.startswith("queue "))
    print(f"queue_tracks={len(queue_tracks)}")
    for i, v in enumerate(queue_tracks):
        print(f"queue_track.{i}={v}")
    launch_names = sorted({e["name"] for e in events if e.get("cat") == "launch"})
    print(f"launch_names={','.join(launch_names)}")
    print(f"display_unit={doc.get('displayTimeUnit')}")


if __name__ == "__main__":
    main(sys.argv[1])
