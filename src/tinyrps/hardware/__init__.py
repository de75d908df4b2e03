"""What programs are and what they run on: the hardware families and their targets, the Cortex-M cores,
the program descriptor, the .pte reader, ETDump profiles and Vela's reports. No torch here."""
