"""A functional model of the Arm Ethos-U NPUs that executes the command stream Vela writes."""
