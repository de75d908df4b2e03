"""Infrastructure every stage uses: errors, files and folders written whole, temporary folders, Ctrl-C,
progress, library noise, torch's threads, the machine's record, accuracy intervals. No torch here."""
