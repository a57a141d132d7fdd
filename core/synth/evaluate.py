"""How good and how private is a synthetic data set (paper Sec. 6).

- utility: a classifier trained on the synthetic set, tested on the REAL test set (Table 1); the same classifier
  trained on the real train set is the reference. Classifier: scikit-learn TF-IDF (word 1-2 grams, sublinear tf)
  + logistic regression, fixed settings for every data set (the paper fixes DistilBERT's settings likewise);
- memorisation: for n = 3..7, the share of distinct synthetic word n-grams that also occur in the train set, over
  all samples and over subsamples of the real test set's size (compared with that set's share);
- embedding separability: random-forest accuracy (stratified k-fold) on the fine-tuned model's mean embeddings of
  the real test texts by label (Fig. 2), and a 2-D projection of them (UMAP, Fig. 1; PCA as a fast fallback).
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable, Sequence

import numpy as np

NGRAM_ORDERS = (3, 4, 5, 6, 7)
_WORD = re.compile(r"\w+|[^\w\s]")


def words(text: str) -> list[str]:
    """Lower-cased words and punctuation marks."""
    return _WORD.findall(text.lower())


def ngrams(tokens: Sequence[str], n: int) -> set[tuple[str, ...]]:
    return {tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)}


def ngram_ratio(synthetic: Iterable[str], train: Iterable[str], n: int) -> float | None:
    """Share of distinct synthetic n-grams found in the train texts; None if the synthetic texts have none."""
    syn: set[tuple[str, ...]] = set()
    for text in synthetic:
        syn |= ngrams(words(text), n)
    if not syn:
        return None
    real: set[tuple[str, ...]] = set()
    for text in train:
        real |= ngrams(words(text), n)
    return len(syn & real) / len(syn)


def ngram_ratios(synthetic: Sequence[str], train: Sequence[str], orders: Sequence[int] = NGRAM_ORDERS) -> dict:
    return {str(n): ngram_ratio(synthetic, train, n) for n in orders}


# Subsamples averaged for a size-matched share (size_matched_ratios): on the shipped quick ε = 3 runs one
# subsample's 3-gram share varied by a standard deviation of 0.003-0.007, so the mean of 5 by 0.0015-0.003
MATCHED_DRAWS = 5


def size_matched_ratios(synthetic: Sequence[str], train: Sequence[str], size: int, draws: int = MATCHED_DRAWS,
                        orders: Sequence[int] = NGRAM_ORDERS) -> dict:
    """ngram_ratios of `size` synthetic texts, to compare with another set of that size (the real test texts): the
    share of distinct n-grams found in the train set falls as a set grows. The mean over `draws` subsamples drawn
    without replacement, or all texts once where there are no more; {"texts", "draws", "ratios"}."""
    if len(synthetic) <= size:
        return {"texts": len(synthetic), "draws": 1, "ratios": ngram_ratios(synthetic, train, orders)}
    by_draw = [ngram_ratios(random.Random(draw).sample(list(synthetic), size), train, orders)
               for draw in range(draws)]
    # a subset may hold no n-gram of an order (short texts): the mean of those that do, None only if none does
    ratios = {key: (float(np.mean(values)) if (values := [r[key] for r in by_draw if r[key] is not None]) else None)
              for key in by_draw[0]}
    return {"texts": size, "draws": draws, "ratios": ratios}


def classifier_accuracy(train_texts: Sequence[str], train_labels: Sequence[str], test_texts: Sequence[str],
                        test_labels: Sequence[str]) -> tuple[float, object]:
    """Accuracy on the test set of TF-IDF + logistic regression fitted on the train set; (accuracy, pipeline)."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    classes = sorted(set(train_labels))
    if len(classes) < 2:  # logistic regression needs two classes; a one-class set predicts its class
        if not classes:
            return 0.0, None
        return float(np.mean([y == classes[0] for y in test_labels])), None
    pipe = make_pipeline(TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True),
                         LogisticRegression(max_iter=2000))
    pipe.fit(list(train_texts), list(train_labels))
    return float(np.mean(pipe.predict(list(test_texts)) == np.asarray(test_labels))), pipe


def separability(embeddings: np.ndarray, labels: Sequence[str], trees: int, folds: int, seed: int) -> float:
    """Mean cross-validated accuracy of a random forest predicting the label from the embedding."""
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.model_selection import StratifiedKFold, cross_val_score

    y = np.asarray(labels)
    folds = max(2, min(folds, int(min(np.unique(y, return_counts=True)[1]))))
    forest = RandomForestClassifier(n_estimators=trees, random_state=seed, n_jobs=1)
    cv = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
    return float(cross_val_score(forest, embeddings, y, cv=cv).mean())


def project_2d(embeddings: np.ndarray, seed: int, method: str = "umap") -> np.ndarray:
    """(N, 2) coordinates: UMAP (umap-learn; its first call compiles numba code, ~30 s) or PCA."""
    if method == "umap" and len(embeddings) > 5:
        import umap

        reducer = umap.UMAP(n_components=2, n_neighbors=min(15, len(embeddings) - 1), random_state=seed,
                            n_jobs=1)
        return np.asarray(reducer.fit_transform(embeddings))
    from sklearn.decomposition import PCA

    return PCA(n_components=2, random_state=seed).fit_transform(embeddings)
