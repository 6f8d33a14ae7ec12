"""One slow check on the real entropy model (the pipeline's SmolLM2 asset, or one dequantised for the session)."""

from __future__ import annotations

import pytest

from stages.entropylong.uncertainty import entropies_at_positions, information_gain, keep_context


@pytest.mark.slow
def test_smollm2_keeps_the_context_that_states_the_answer(smollm2_asset):
    from stages.assets.loaders import load_causal_lm

    model, tok = load_causal_lm(smollm2_asset)
    doc = tok("In 1854 the council of Brindlemoor chose a new mayor. The new mayor of Brindlemoor was Thaddeus",
              add_special_tokens=False)["input_ids"]
    pos = len(doc) - 1  # predicting "Thaddeus" (its first token) is a guess without the context
    answer = tok("Records show that the mayor of Brindlemoor chosen in 1854 was Thaddeus Quill.\n\n",
                 add_special_tokens=False)["input_ids"]
    unrelated = tok("Photosynthesis converts light into chemical energy in plants.\n\n",
                    add_special_tokens=False)["input_ids"]
    h = entropies_at_positions(model, [doc], [[pos]])[0]
    h_ctx = entropies_at_positions(model, [answer + doc, unrelated + doc],
                                   [[pos + len(answer)], [pos + len(unrelated)]])
    di = information_gain(h[0], [h_ctx[0][0], h_ctx[1][0]])
    assert keep_context(di, 0.4).tolist() == [True, False]
