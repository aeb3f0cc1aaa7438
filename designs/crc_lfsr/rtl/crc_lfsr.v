// crc_lfsr: a byte-wide CRC-32 (IEEE 802.3, reflected, init and final XOR 0xFFFFFFFF) and a
// 16-bit Fibonacci LFSR (x^16 + x^14 + x^13 + x^11 + 1) that can be seeded, both on an
// asynchronous active-low reset. One byte per clock when `valid`; `init` restarts the CRC; `good`
// is the CRC residue check of a frame that ends with its own FCS (0xDEBB20E3 before the XOR).
// Written from scratch as a design the flow was not tuned on (bench/flow_scaling.py).
module crc_lfsr (
    input  wire        clk,
    input  wire        rst_n,
    input  wire        init,
    input  wire        valid,
    input  wire [7:0]  data,
    input  wire        seed_load,
    input  wire [15:0] seed,
    input  wire        step,
    output wire [31:0] crc,
    output wire        good,
    output wire [15:0] prbs
);
    reg [31:0] state;
    reg [15:0] lfsr;

    function [31:0] crc32_byte(input [31:0] c, input [7:0] d);
        integer i;
        reg [31:0] x;
        begin
            x = c;
            for (i = 0; i < 8; i = i + 1)
                x = (x >> 1) ^ ((x[0] ^ d[i]) ? 32'hEDB88320 : 32'h0);
            crc32_byte = x;
        end
    endfunction

    always @(posedge clk or negedge rst_n) begin
        if (!rst_n)
            state <= 32'hFFFFFFFF;
        else if (init)
            state <= 32'hFFFFFFFF;
        else if (valid)
            state <= crc32_byte(state, data);
    end

    always @(posedge clk or negedge rst_n) begin
        if (!rst_n)
            lfsr <= 16'hACE1;
        else if (seed_load)
            lfsr <= (seed == 16'h0) ? 16'hACE1 : seed;   // the all-zero state would lock up
        else if (step)
            lfsr <= {lfsr[14:0], lfsr[15] ^ lfsr[13] ^ lfsr[12] ^ lfsr[10]};
    end

    assign crc  = ~state;
    assign good = (state == 32'hDEBB20E3);
    assign prbs = lfsr;
endmodule
