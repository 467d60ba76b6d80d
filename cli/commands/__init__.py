"""One module per verb. Importing this package registers every command."""
