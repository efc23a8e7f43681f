"""The campaign file: the campaign model and its loading (read within bounds by bounded_read.py; the variant
models come from backends/, the pieces every model is made of from vocabulary/), extends:, the workload model,
repetitions and busy:, published: and scale:."""
