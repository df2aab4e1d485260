#!/usr/bin/env python3
"""Writes the seed corpus of fuzz_max_file (tests/fuzz/corpus/): valid_*
files parse, bad_* files are refused; the replay test checks both. Rerun
after changing the cases: python3 tests/fuzz/make_corpus.py
"""

import pathlib
import struct

MAGIC = bytes([0x93, 0xF0, 0x9F, 0x94, 0xA5, 0x2B, 0x2B, 0x93])


def max_file(dtype=81, dims=(2, 3), key=b"t", elem=4, major=0, minor=1,
             magic=MAGIC, metadata_delta=0, offset_delta=0, data=None):
    """A .max file as MAX's writer lays it out (spec section 8.1)."""
    metadata = 4 + len(key) + 2 + 4 * len(dims) + 8 + metadata_delta
    n = 1
    for d in dims:
        n *= d
    if data is None:
        data = bytes(i % 251 for i in range(n * elem))
    head = magic + struct.pack("<IIQI", major, minor, metadata, len(key)) + key
    head += struct.pack("<BB", dtype, len(dims)) + struct.pack(f"<{len(dims)}I", *dims)
    head += struct.pack("<Q", 24 + metadata + offset_delta)
    return head + data


CASES = {
    "valid_float32_2x3": max_file(),
    "valid_rank0_int64": max_file(dtype=141, dims=(), elem=8),
    "valid_bf16_4": max_file(dtype=80, dims=(4,), key=b"layer.0/w", elem=2),
    "valid_float8_e4m3fn_3x1x2": max_file(dtype=75, dims=(3, 1, 2), elem=1),
    "valid_bool_empty": max_file(dtype=1, dims=(0, 5), elem=1),
    "valid_rank8_uint16": max_file(dtype=136, dims=(1, 2, 1, 2, 1, 1, 2, 1), elem=2),
    "valid_float4_5": max_file(dtype=64, dims=(5,), elem=1),
    "valid_rank255_float16": max_file(dtype=79, dims=(1,) * 254 + (2,), elem=2),
    "valid_long_key_int8": max_file(dtype=135, dims=(3,), key=b"k" * 3000, elem=1),
    "bad_magic_png": max_file(magic=b"\x89PNG\r\n\x1a\n"),
    "bad_short": MAGIC[:5],
    "bad_version_1": max_file(major=1),
    "bad_dtype_74": max_file(dtype=74),
    "bad_metadata_plus_4": max_file(metadata_delta=4),
    "bad_truncated_dims": max_file(dims=(7,) * 20, elem=1, data=b"")[:60],
    "bad_data_short": max_file()[:-1],
    "bad_offset_past_end": max_file(offset_delta=1000),
    "bad_shape_overflow": max_file(dims=(0xFFFFFFFF,) * 3, elem=1, data=b""),
}

if __name__ == "__main__":
    out = pathlib.Path(__file__).resolve().parent / "corpus"
    out.mkdir(exist_ok=True)
    for name, data in CASES.items():
        (out / name).write_bytes(data)
    print(f"wrote {len(CASES)} files to {out}")
