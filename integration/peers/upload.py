"""Uploads a tree with google-cloud-storage's transfer_manager, for run.sh.

usage: upload.py DIR BUCKET PREFIX WORKERS thread|process [skip]

STORAGE_EMULATOR_HOST points the client at the fake. "skip" passes
skip_if_exists=True (each write carries ifGenerationMatch=0), what a rerun
after a kill has to avoid writing finished files again.
"""
import os
import sys
import time

from google.cloud import storage
from google.cloud.storage import transfer_manager


def main():
    src, bucket_name, prefix, workers, worker_type = sys.argv[1:6]
    skip = len(sys.argv) > 6 and sys.argv[6] == "skip"
    workers = int(workers)
    start = time.monotonic()
    names = []
    for root, _, files in os.walk(src):
        for f in files:
            names.append(os.path.relpath(os.path.join(root, f), src))
    names.sort()
    client = storage.Client(project="p")
    if worker_type == "thread":
        # requests keeps 10 connections per host by default: as many as
        # the workers, so that 64 threads do not open and drop connections.
        import requests.adapters

        adapter = requests.adapters.HTTPAdapter(pool_connections=workers, pool_maxsize=workers)
        client._http.mount("http://", adapter)
        client._http.mount("https://", adapter)
    bucket = client.bucket(bucket_name)
    results = transfer_manager.upload_many_from_filenames(
        bucket,
        names,
        source_directory=src,
        blob_name_prefix=prefix,
        max_workers=workers,
        worker_type=transfer_manager.THREAD if worker_type == "thread" else transfer_manager.PROCESS,
        skip_if_exists=skip,
        raise_exception=False,
    )
    failed = [(n, r) for n, r in zip(names, results) if isinstance(r, Exception)]
    # With skip, a finished file's write fails its precondition (412):
    # that is the skip, not a failure.
    skipped = [f for f in failed if skip and getattr(f[1], "code", None) == 412]
    failed = [f for f in failed if not (skip and getattr(f[1], "code", None) == 412)]
    el = time.monotonic() - start
    print(f"python: {len(names)} files, {len(skipped)} skipped, {len(failed)} failed, {el:.3f}s, "
          f"{(len(names) - len(failed) - len(skipped)) / el:.1f} objects/s")
    for n, r in failed[:10]:
        print(f"failed: {n}: {r!r}", file=sys.stderr)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
