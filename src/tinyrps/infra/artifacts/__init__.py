"""The files and folders the pipeline writes and reads back (a program's descriptor is tinyrps.hardware.descriptor's).

    files     checksums, atomic single-file writes (only over a regular file or nothing), memory and disk
    manifest  a folder's manifest: every file's size and SHA-256, written last, checked by readers
    locks     one writer per output folder (an flock on .TARGET.lock, naming its holder)
    staging   whole-folder stages: built beside the target and swapped in whole; leftovers of killed stages
    records   a data set's data.json and a run's config.json, read and checked

Every stage uses this package, so it imports only the standard library: reading a descriptor or
writing a JSON result must not cost a torch or ExecuTorch import.
"""
