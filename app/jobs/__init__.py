"""The durable job queue's workers, what each job does, and the processes the jobs and checks run in."""
