"""polyjudge.report"""
