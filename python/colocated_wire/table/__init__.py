"""The pipelines over a table: lower (the builder), check and lift; they walk and dispatch."""
