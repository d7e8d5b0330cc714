raise ValueError("boom from payload")
