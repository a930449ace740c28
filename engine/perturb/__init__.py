"""Taxonomy-tied perturbations of comments, and what they reveal about metrics.

- `language`: per-language resources (negation rules, sentence and clause boundaries, units),
  read from the JSON data files in `resources/`;
- `text`: a comment's scored span with its markers protected, and the edits families make;
- `families`: the perturbation families, each standing for an error code of the taxonomy;
- `params`: the stage's options and those of the analyses;
- `perturber`: the stage's corpus pre-pass and the per-part perturbation table;
- `items`: which perturbation rows the score stage scores (those that applied);
- `analysis`: sensitivity dS per (metric setting, language, family), streamed per score task;
- `significance`: correlation with the expert labels and Williams' test for dependent
  correlations.
"""
