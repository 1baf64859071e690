build-dev/obj/sim/nic/cassini.o: sim/nic/cassini.c sim/nic/cassini.h
sim/nic/cassini.h:
