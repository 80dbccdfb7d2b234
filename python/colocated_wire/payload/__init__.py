"""The parts of a payload outside the table: the header, the specs and the function."""
