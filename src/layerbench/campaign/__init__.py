"""The campaign file: bounded YAML reading, its Pydantic models (the variant models come from backends/),
extends:, the workload model."""
