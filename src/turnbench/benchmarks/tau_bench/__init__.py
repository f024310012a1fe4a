"""tau-bench's two domains (retail, airline) as a library the benchmarks `tau-bench-retail`
and `tau-bench-airline` share: the database with copy-on-write states and upstream's hash
(`database`), the tools written in turnbench (`tools`, `retail_tools`, `airline_tools`,
`calculator`), tasks and their gold states (`tasks`), the reward and pass^k (`reward`), and
where the data comes from (`sources`, `sources.json`). It is no benchmark itself: it exports
no `BENCHMARK`, and importing it loads nothing (each module is imported where it is used).
"""
