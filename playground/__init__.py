"""Qt desktop front end of the autograd playground."""
