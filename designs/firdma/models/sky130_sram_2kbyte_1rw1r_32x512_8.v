// Behavioral simulation model of the OpenRAM macro sky130_sram_2kbyte_1rw1r_32x512_8
// (512 words x 32 bits, port 0 read/write with byte write mask, port 1 read-only), written
// from the port list of its LEF/Liberty abstracts in the shared PDK. For simulation only:
// synthesis and STA use the Liberty abstract as a black box.
// Timing as in the Liberty: inputs are captured on the rising clock edge; the write and the
// read happen after the falling edge (dout is related to the falling edge), so read data is
// stable before the next rising edge. Reading a word written in the same cycle returns X.
`default_nettype none
module sky130_sram_2kbyte_1rw1r_32x512_8 (
`ifdef USE_POWER_PINS
    inout wire vccd1,
    inout wire vssd1,
`endif
    input  wire        clk0,
    input  wire        csb0,
    input  wire        web0,
    input  wire [3:0]  wmask0,
    input  wire [8:0]  addr0,
    input  wire [31:0] din0,
    output reg  [31:0] dout0,
    input  wire        clk1,
    input  wire        csb1,
    input  wire [8:0]  addr1,
    output reg  [31:0] dout1
);
    reg [31:0] mem [512];
    reg        csb0_q, web0_q, csb1_q;
    reg [3:0]  wmask0_q;
    reg [8:0]  addr0_q, addr1_q;
    reg [31:0] din0_q;

    always @(posedge clk0) begin
        csb0_q   <= csb0;
        web0_q   <= web0;
        wmask0_q <= wmask0;
        addr0_q  <= addr0;
        din0_q   <= din0;
    end

    always @(posedge clk1) begin
        csb1_q  <= csb1;
        addr1_q <= addr1;
    end

    always @(negedge clk0) begin
        if (!csb0_q && !web0_q) begin
            for (int b = 0; b < 4; b++)
                if (wmask0_q[b]) mem[addr0_q][b*8 +: 8] <= din0_q[b*8 +: 8];
        end
        if (!csb0_q && web0_q) dout0 <= mem[addr0_q];
    end

    always @(negedge clk1) begin
        if (!csb1_q) begin
            if (!csb0_q && !web0_q && addr0_q == addr1_q) dout1 <= 32'bx;
            else dout1 <= mem[addr1_q];
        end
    end
endmodule
`default_nettype wire
