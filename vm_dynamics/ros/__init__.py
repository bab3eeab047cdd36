"""ROS 2 data layer without a ROS install: message construction and checks (:mod:`.messages`)
and MCAP recordings (:mod:`.recording`)."""
