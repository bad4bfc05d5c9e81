"""Decodes an fsyncsim Perfetto trace with Perfetto's own generated schema (PyPI `perfetto`:
perfetto_trace_pb2), inflating `compressed_packets` as trace_processor does, and prints a
JSON summary: threads, named tracks, counters, event counts per type, and every field the
schema does not know (there must be none). Used by tests/trace.rs."""
import json
import sys
import zlib

from google.protobuf.message import Message
from google.protobuf.unknown_fields import UnknownFieldSet
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb


def unknown(msg, path, out):
    """Paths of fields the schema does not know, anywhere in msg."""
    if len(UnknownFieldSet(msg)) > 0:
        out.append(path)
    for field, value in msg.ListFields():
        if field.type == field.TYPE_MESSAGE:
            items = [value] if isinstance(value, Message) else value
            for v in items:
                unknown(v, path + "." + field.name, out)


def packets(data):
    trace = pb.Trace()
    trace.ParseFromString(data)
    for p in trace.packet:
        if p.HasField("compressed_packets"):
            yield from packets(zlib.decompress(p.compressed_packets))
        else:
            yield p


def main():
    data = open(sys.argv[1], "rb").read()
    threads, tracks, counters, types, bad = [], [], [], {}, []
    compressed = pb.Trace()
    compressed.ParseFromString(data)
    chunks = sum(1 for p in compressed.packet if p.HasField("compressed_packets"))
    for p in packets(data):
        unknown(p, "packet", bad)
        if p.HasField("track_descriptor"):
            d = p.track_descriptor
            if d.HasField("thread"):
                threads.append({"pid": d.thread.pid, "tid": d.thread.tid, "name": d.thread.thread_name})
            elif d.HasField("counter"):
                counters.append(d.name)
            elif d.HasField("name"):
                tracks.append(d.name)
        if p.HasField("track_event"):
            t = pb.TrackEvent.Type.Name(p.track_event.type)
            types[t] = types.get(t, 0) + 1
    print(json.dumps({"chunks": chunks, "threads": threads, "tracks": tracks,
                      "counters": counters, "types": types, "unknown": bad[:10]}))


if __name__ == "__main__":
    main()
