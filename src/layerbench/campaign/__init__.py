"""The campaign file: its Pydantic models (the variant models come from backends/), extends:, the workload model;
read within bounds by bounded_read.py."""
