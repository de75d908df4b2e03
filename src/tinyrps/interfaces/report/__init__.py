"""What the commands show of their results: tables on screen (rich) and the main job's Markdown report,
one module per section (accuracy, speed and size, the NPU searches), on the table layout of `tables`."""
