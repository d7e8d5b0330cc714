"""One router per resource; routes stay thin and delegate to the store and the queue."""
