log_level = "ERROR"
