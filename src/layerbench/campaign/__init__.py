"""The campaign file: bounded YAML reading, the campaign model and its loading (the variant models come from
backends/, the pieces every model is made of from vocabulary/), extends:, the workload model, repetitions and
busy:, published: and scale:."""
