"""The CPU inference engine behind the transformers backend (``model.fast_decode``).

``decode`` (a written-out Llama decode step and cascade attention), ``linear`` (the
packed small-batch matmul kernel of ``kernels/``), ``attention`` (SDPA sharing key/value
heads), ``kv_cache`` (the generation's KV cache, shared prefixes) and ``prefix_cache``
(kept keys/values of finished sequences). ``model.fast_decode: false`` is the plain
transformers path they are tested against; ``docs/cpu-inference.md`` has the design
and the measurements.
"""
