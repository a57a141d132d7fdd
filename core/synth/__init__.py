"""DP synthetic labelled text (seed 004): multitask DP fine-tuning with PPLM-steered generation.

Pipeline (core/synth/run.py), one run = one generator at one epsilon:
1. labelled data (data.py): chitchat utterances labelled by their conversation prompt, four topics
   ("film", "smell", "peanut butter", "music"; only the first 12 turns of a conversation, at least 6 words,
   private users only), balanced by downsampling, split 80/20 per label (seeded); or a user's text,label file;
2. the public base model and tokenizer of core.base (trained on PUBLIC chitchat text only);
3. DP-Adam fine-tuning (train.py, opacus ghost clipping) on "BOS label SEP text", delta = 1/|train|, noise
   calibrated by core.privacy (PLD accountant) before training; epsilon inf = clipped, no noise, NOT private;
4. generation (pplm.py), three generators:
   - filter: nucleus sampling from "BOS label SEP", kept when the discriminator gives p(label|x) > 0.5;
   - pplm: PPLM steering with a discriminator head trained (with DP) on the frozen fine-tuned model;
   - multitask (the paper's method): the head is trained jointly with the LM under DP on "BOS rand SEP text"
     (label replaced by a random token) at several prefix lengths, linearly weighted; then PPLM steering;
   the baselines' head reads private data, so it is DP-trained and its steps share the run's budget;
5. evaluation (evaluate.py): TF-IDF + logistic regression trained on the synthetic set, tested on the real test
   set (vs the same classifier on real train data), n-gram (3..7) overlap with the train set, random-forest
   separability of the fine-tuned model's mean embeddings of the real test texts, and their UMAP projection.

core.synth never imports streamlit; epsilons come only from core.privacy.
"""
