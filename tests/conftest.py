import parlab


def pytest_sessionfinish(session, exitstatus):
    parlab.shutdown()
