"""Quality on the recipes' validation slice: both jobs over seeds, cross-encoder, Matryoshka, recalibration."""
