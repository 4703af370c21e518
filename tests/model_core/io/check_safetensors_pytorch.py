#!/usr/bin/env python3
"""Cross-checks Tensorscope's safetensors files against PyTorch, from the format's definition.

No `safetensors` package is needed (none is available offline): files are parsed and written with
struct, json and torch.frombuffer, following https://github.com/huggingface/safetensors.

  check_safetensors_pytorch.py verify FILE   FILE must hold exactly expected_tensors() and
                                             EXPECTED_METADATA, laid out as Tensorscope writes:
                                             sorted names, contiguous, header space-padded to 8.
  check_safetensors_pytorch.py write FILE    writes expected_tensors() the way the reference
                                             implementation orders them (by dtype, then name).

expected_tensors() has a C++ twin, expectedTensors() in test_tensor_convert.cpp. Exit 0 and
"ok: ..." on success; exit 1 with the reason otherwise.
"""
import json
import struct
import sys

import torch

DTYPES = {
    "BOOL": torch.bool, "U8": torch.uint8, "I8": torch.int8, "I16": torch.int16,
    "I32": torch.int32, "I64": torch.int64, "F16": torch.float16, "BF16": torch.bfloat16,
    "F32": torch.float32, "F64": torch.float64,
}
NAMES = {v: k for k, v in DTYPES.items()}
# The reference writer puts larger alignments first, then sorts by name.
ALIGNMENT_ORDER = ["F64", "I64", "F32", "I32", "BF16", "F16", "I16", "U8", "I8", "BOOL"]
EXPECTED_METADATA = {"format": "pt", "producer": "tensorscope", "note": "\u00fc"}


def expected_tensors():
    return {
        "f32": torch.tensor([(i - 2.5) * 0.25 for i in range(6)], dtype=torch.float32).reshape(2, 3),
        "f64": torch.tensor([(i + 1) / 3.0 for i in range(4)], dtype=torch.float64),
        "f16": torch.tensor([1.0, -2.5, 65504.0, 2.0**-14, 2.0**-24], dtype=torch.float16),
        "bf16": torch.tensor([1.5, -256.0, 2.0**-126, 0.0078125], dtype=torch.bfloat16),
        "i64": torch.tensor([-(2**62), 0, 2**62 + 7], dtype=torch.int64),
        "i32": torch.tensor([-2147483648, 2147483647, -1, 7], dtype=torch.int32).reshape(2, 2),
        "i16": torch.tensor([-32768, 32767, 12], dtype=torch.int16),
        "i8": torch.tensor([-128, 127, 0], dtype=torch.int8),
        "u8": torch.tensor([0, 255], dtype=torch.uint8),
        "bool": torch.tensor([True, False, False, True]),
        "scalar": torch.tensor(3.5, dtype=torch.float32),
        "empty": torch.zeros((0, 3), dtype=torch.float32),
        "\u00fcn\u00efcode": torch.tensor([42.0], dtype=torch.float32),
    }


def fail(reason):
    print("FAIL: " + reason)
    sys.exit(1)


def numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def load(path):
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 8:
        fail(f"{path}: only {len(data)} bytes")
    (n,) = struct.unpack("<Q", data[:8])
    raw = data[8:8 + n]
    if len(raw) != n:
        fail(f"header size {n} beyond the file")
    text = raw.decode("utf-8")
    header = json.loads(text)
    buffer = data[8 + n:]
    metadata = header.pop("__metadata__", {})
    tensors, spans = {}, []
    for name, entry in header.items():
        if set(entry) != {"dtype", "shape", "data_offsets"}:
            fail(f"{name}: keys {sorted(entry)}")
        dtype = DTYPES[entry["dtype"]]
        shape = entry["shape"]
        begin, end = entry["data_offsets"]
        itemsize = torch.tensor([], dtype=dtype).element_size()
        if end - begin != numel(shape) * itemsize or end > len(buffer):
            fail(f"{name}: data_offsets {begin, end} do not fit shape {shape} of {entry['dtype']}")
        if end > begin:
            t = torch.frombuffer(bytearray(buffer[begin:end]), dtype=dtype).reshape(shape)
        else:
            t = torch.empty(shape, dtype=dtype)
        tensors[name] = t
        spans.append((begin, end, name))
    return n, text, tensors, metadata, sorted(spans), len(buffer)


def verify(path):
    n, text, tensors, metadata, spans, buffer_size = load(path)
    if n % 8 != 0:
        fail(f"header size {n} is not a multiple of 8")
    stripped = text.rstrip(" ")
    if not text.startswith("{") or not stripped.endswith("}") or len(text) - len(stripped) >= 8:
        fail("header must be a JSON object padded with fewer than 8 spaces")
    # Tensorscope lays tensors out contiguously in sorted name order (UTF-8 byte order).
    cursor = 0
    by_name = {name: (begin, end) for begin, end, name in spans}
    for name in sorted(by_name):
        begin, end = by_name[name]
        if begin != cursor:
            fail(f"{name} starts at byte {begin}, expected {cursor} (sorted, contiguous layout)")
        cursor = end
    if cursor != buffer_size:
        fail(f"buffer has {buffer_size} bytes, tensors cover {cursor}")
    if metadata != EXPECTED_METADATA:
        fail(f"metadata {metadata} != {EXPECTED_METADATA}")
    expected = expected_tensors()
    if set(tensors) != set(expected):
        fail(f"names {sorted(tensors)} != {sorted(expected)}")
    for name, want in expected.items():
        got = tensors[name]
        if got.dtype != want.dtype or got.shape != want.shape or not torch.equal(got, want):
            fail(f"{name}: got {got.dtype} {tuple(got.shape)} {got}, expected {want.dtype} {tuple(want.shape)} {want}")
    print(f"ok: {len(tensors)} tensors and {len(metadata)} metadata entries verified in {path}")


def write(path):
    tensors = expected_tensors()
    order = sorted(tensors, key=lambda k: (ALIGNMENT_ORDER.index(NAMES[tensors[k].dtype]), k))
    header = {"__metadata__": EXPECTED_METADATA}
    chunks, offset = [], 0
    for name in order:
        t = tensors[name].contiguous()
        raw = t.reshape(-1).view(torch.uint8).numpy().tobytes()
        header[name] = {"dtype": NAMES[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(raw)]}
        chunks.append(raw)
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(chunks))
    print(f"ok: wrote {len(order)} tensors to {path} in order {order}")


def main():
    if sys.byteorder != "little" or len(sys.argv) != 3 or sys.argv[1] not in ("verify", "write"):
        print(__doc__)
        sys.exit(2)
    (verify if sys.argv[1] == "verify" else write)(sys.argv[2])


if __name__ == "__main__":
    main()
