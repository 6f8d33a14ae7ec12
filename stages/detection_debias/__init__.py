"""Generation-based debiasing for object detection (ICLR 2026, issue 33): the representation score.

The paper's claim, in our words: instance frequency is an incomplete proxy for what a detector lacks. A
representation score per object group (class x size x position), RS = frequency term x (visual diversity of the
group's ROI features + beta x context diversity), diagnoses under-represented groups; new layouts sampled with
probability ∝ (RS + eps)^-tau, in the paper rendered by a blueprint-conditioned generator, narrow the gap of
under-represented groups. The miniature: procedural 48 x 48 scenes of four shape classes with planted biases (a rare
class, rare large objects, a rare position, and a frequent but low-diversity group), a small CenterNet-style detector
trained here, COCO mAP per group with pycocotools, and four arms at one synthetic budget (none, reused layouts,
inverse-frequency layouts, RS-guided layouts) whose synthetic images a blueprint-conditioned generator trained here
on the training scenes draws (``blueprint_generator``), plus the RS layouts through the procedural renderer (the
generator's upper bound). The generative alignment term is dropped (see the report).
"""
