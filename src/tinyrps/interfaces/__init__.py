"""What a person uses: the command line, the terminal game, the browser game's server, the report and
its plots, classify and run."""
