"""BioCAP: descriptive captions as extra supervision for a biology CLIP.

Paper: "BioCAP: Exploiting Synthetic Captions Beyond Labels in Biological Foundation Models"
(ICLR 2026; arXiv 2510.20095).

Claim, in our words: training a BioCLIP-style contrastive model with faithful, instance-specific
descriptive captions beside the taxonomic labels (text types mixed per batch; separate visual
projectors for taxonomic text and for captions) aligns images with the traits that identify a
species rather than with spurious context, which improves zero-shot species classification and
text-to-image retrieval over label-only training.

The miniature: procedurally drawn "specimens" (112 px beetles whose genus sets the body shape and
whose species sets colour and markings) on a background that correlates with the body colour in
training and is changed in a shifted test set; captions are written from the traits measured on
each image through a few format examples (the paper prompts a multimodal LLM with Wikipedia-derived
trait descriptions); the image and text encoders are frozen pretrained models (EfficientNet-Lite0,
all-MiniLM-L6-v2), encoded once, and only projectors are trained (the paper trains a ViT-B/16 CLIP
on millions of images). Held-out taxa, never seen in training, carry the zero-shot test; a caption
format never seen in training carries the retrieval test. Two controls isolate faithfulness:
hallucinated captions (the taxon's traits, not the image's) and shuffled-trait captions.
"""
