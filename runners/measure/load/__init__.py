"""The load profiles, one module per profile: burst (the seeds' plan: c requests sent
together, the next batch when the slowest is back), concurrency (exactly c in flight for
a duration), rate (open-loop arrivals at a request rate, Poisson, gamma or constant) and
sweep (rising rates until throughput stops growing). `level` turns any level's replies
into the same figures; the records of every profile have one format.
"""
