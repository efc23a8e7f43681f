"""The campaign file: bounded YAML reading, its Pydantic models, extends:, settings (defaults once)."""
