"""The offline commands' report formats (`-o`), apart from the report itself: the command line
names them for every command, the operator's included, without loading the report's code."""

JSON, YAML, TEXT = "json", "yaml", "text"
FORMATS = (JSON, YAML, TEXT)  # `-o`: text is the summary, also when piped
