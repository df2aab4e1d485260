#!/usr/bin/env python3
"""mpi_allreduce: axl Buffers in an MPI job (mpi4py), two ways.

  1. CPU Buffers go to mpi4py as they are: ``comm.Sendrecv`` and
     ``comm.Allreduce`` take them through DLPack (mpi4py reads
     ``__dlpack__``/``__dlpack_device__``: device CPU, zero copy), so MPI reads
     and writes the Buffers' own memory.
  2. Accelerator Buffers go through host staging: copy the device buffer
     into a staging buffer (page-locked host memory bound to the device),
     ``Allreduce`` in place on its ``to_numpy()`` view (a zero-copy alias),
     copy back. A non-CUDA-aware MPI can only read host memory; handing it a
     device address directly would make it dereference memory it cannot
     (docs/python.md, "MPI").

Each rank checks its results against numpy and prints one line.

usage (two ranks; one virtual accelerator per rank):

  AXL_VIRTUAL_DEVICES=1 mpirun -n 2 python examples/mpi_allreduce.py

Each rank takes accelerator ``rank % accelerator_count()``. Without an
accelerator, step 2 runs on the CPU device (its staging is then a plain
host buffer). With ``AXL_ENABLE_PROFILING=on
AXL_PROFILE_OUTPUT=trace.{rank}.json`` each rank writes its own timeline.
Exits 0 when every check passed, 1 otherwise (the other ranks are aborted).
"""

from __future__ import annotations

import sys

import numpy as np
from mpi4py import MPI

from axl.driver import CPU, Accelerator, Buffer, Device, Usage, accelerator_count
from axl.dtype import DType

N = 4096


def values(rank: int) -> np.ndarray:
    """What rank ``rank`` contributes: distinct per rank and per element,
    exact in float32, so every sum below compares with ==."""
    return np.arange(N, dtype=np.float32) * (rank + 1) + rank


def check(what: str, got: np.ndarray, want: np.ndarray, rank: int, comm: MPI.Comm) -> None:
    if not np.array_equal(got, want):
        bad = int(np.flatnonzero(got != want)[0])
        print(f"rank {rank}: FAIL {what}: element {bad} is {got[bad]}, expected {want[bad]}", flush=True)
        comm.Abort(1)


def cpu_buffers_direct(comm: MPI.Comm) -> None:
    """Step 1: CPU Buffers handed straight to mpi4py."""
    rank, size = comm.Get_rank(), comm.Get_size()
    cpu = CPU()
    send = Buffer.from_numpy(values(rank))  # aliases the array, on the CPU device
    recv = Buffer(DType.float32, (N,), cpu)
    right, left = (rank + 1) % size, (rank - 1) % size
    comm.Sendrecv(send, dest=right, recvbuf=recv, source=left)
    check("Sendrecv of CPU Buffers", recv.to_numpy(), values(left), rank, comm)

    total = Buffer(DType.float32, (N,), cpu)
    comm.Allreduce(send, total, op=MPI.SUM)
    check("Allreduce of CPU Buffers", total.to_numpy(), sum(values(r) for r in range(size)), rank, comm)


def device_buffers_staged(comm: MPI.Comm, dev: Device) -> None:
    """Step 2: Allreduce of device Buffers through host staging."""
    rank, size = comm.Get_rank(), comm.Get_size()
    data = Buffer.from_numpy(values(rank), device=dev)  # device memory
    staging = Buffer(DType.float32, (N,), dev, usage=Usage.STAGING)
    staging.inplace_copy_from(data)  # device -> host, enqueued on dev's queue
    # to_numpy() waits for that copy and aliases the staging memory, so MPI
    # reduces in place in it.
    comm.Allreduce(MPI.IN_PLACE, staging.to_numpy(), op=MPI.SUM)
    data.inplace_copy_from(staging)  # host -> device
    check("staged Allreduce of device Buffers", data.to_numpy(), sum(values(r) for r in range(size)), rank,
          comm)


def main() -> int:
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    count = accelerator_count()
    dev: Device = Accelerator(rank % count) if count else CPU()
    cpu_buffers_direct(comm)
    device_buffers_staged(comm, dev)
    print(f"rank {rank}/{size}: OK: CPU Buffers direct, {N} float32 staged through {dev} (api {dev.api})",
          flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
