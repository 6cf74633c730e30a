"""What the reports show, computed once as plain data; `planner.render` only formats it.

The CLI asks this layer for a report's figures (`pipeline.pipeline_view`: a pipeline plan
next to the plans users would otherwise run; `compare.compare_report`: the tables of
`planner compare`), then hands the data (`views`) to the renderer. The render layer
imports `views` alone (and never the algorithms or the experiments this layer runs: the
`render` contract in pyproject.toml).
"""
