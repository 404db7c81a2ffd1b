"""`tune`: the seeds' hunt run by tfk8s. Each round brings one stack up through the Pulumi engine,
measures its throughput and `diagnose`'s figures over one window, writes the next stack from the
finding and takes the round down; it stops when nothing more helps (rounds.py says when)."""
